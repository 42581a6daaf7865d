"""Z3 encodings of the TLA+ modules in spec/: the same transition systems over unbounded integers.

Each module here (``<snake_module>.py``) exposes ``prove(bug: str = "none") ->
list[ProofResult]``. They import their helpers relatively (``from .common import ...``), so the
package can be loaded under any name: ``logwright.verify.formal.load_z3_module`` loads it from
spec/ without putting spec/ on ``sys.path`` (where this package's name would shadow z3-solver's).
"""
