"""Group `syntax`: operator trees, rejected formulae and training-free structural vectors."""
