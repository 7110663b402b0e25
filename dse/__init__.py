"""dse: design-space exploration of DLRM training systems."""
