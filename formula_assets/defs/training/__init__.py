"""Group `training`: cross-validation folds and the trained fold models."""
