"""Named-fault mutation testing for logwright (``make mutants``); not part of the package.

``catalogue`` lists the faults, ``run`` applies each to a temporary copy of the tree and runs the
CI test campaign against it. See docs/verification.md, "Mutation score".
"""
