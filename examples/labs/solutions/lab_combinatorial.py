"""Solutions of lab_combinatorial.ipynb: each ``# Exercise N`` block replaces that cell."""
import numpy as np


# Exercise 1
def top_k(scores, k):
    """The 0/1 super arm of the k largest scores."""
    s = np.zeros(len(scores), dtype=np.int64)
    s[np.argsort(-np.asarray(scores))[:k]] = 1
    return s


# Exercise 2
def cucb_index(means, counts, t):
    """The optimistic index of every base arm."""
    counts = np.asarray(counts, dtype=np.float64)
    width = np.sqrt(3.0 * np.log(t) / (2.0 * np.maximum(counts, 1)))
    return np.where(counts > 0, np.minimum(np.asarray(means) + width, 1.0), 1.0)
