"""OPT graphs for neural networks: the token vocabulary, batching and the GINE encoder."""
