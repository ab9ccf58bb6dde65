"""Solutions of lab_bco_two_point.ipynb: each ``# Exercise N`` block replaces that cell."""
import numpy as np


# Exercise 1
def two_point_release(f1, f2, x1, x2, G, sigma, rng):
    """One user's release of the two losses f1 = f(x1), f2 = f(x2)."""
    step = np.asarray(x1, dtype=np.float64) - np.asarray(x2, dtype=np.float64)
    bound = G * np.linalg.norm(step)
    noise = rng.normal(0.0, sigma, size=step.shape)
    return float(np.clip(f1 - f2, -bound, bound) + noise @ step)


# Exercise 2
def gradient_estimate(D, u, rho, d):
    """The gradient estimate from one release D along the direction u."""
    return d / (2.0 * rho) * D * np.asarray(u, dtype=np.float64)
