"""Stage `training`: cross-validation folds and splits, the contrastive aligners (paper §4.3),
their losses, the training loop and the stored artifacts."""
