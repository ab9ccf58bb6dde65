"""Solutions of lab_nonparametric_transfer.ipynb: each ``# Exercise N`` block replaces that
cell."""
import numpy as np


# Exercise 1
def grid_cell(x, bins):
    """The cell number of each row of x."""
    idx = np.minimum((np.asarray(x) * bins).astype(np.int64), bins - 1)
    return np.ravel_multi_index(tuple(idx.T), (bins,) * idx.shape[1])


# Exercise 2
def pooled_mean(n_target, mean_target, n_aux, mean_aux):
    """The mean of each cell over both datasets."""
    total = np.asarray(n_target) + np.asarray(n_aux)
    pooled = np.asarray(n_target) * mean_target + np.asarray(n_aux) * mean_aux
    return np.where(total > 0, pooled / np.maximum(total, 1), 0.0)
