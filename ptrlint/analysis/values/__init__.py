"""Queries over the model: which values are addresses and which buffers hold them (lattice, fixpoint, transfer, flow)."""
