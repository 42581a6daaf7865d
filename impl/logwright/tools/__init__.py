"""Operator tools over the network: what the CLI's --bootstrap-server options use."""
