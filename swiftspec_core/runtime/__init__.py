"""Processes, placement of the target and draft groups, CUDA graphs, the disaggregated round."""
