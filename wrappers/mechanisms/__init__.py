"""The privacy primitives: mechanisms, calibration, noise streams, continual release, compiled
transforms, the audit and the guarantee type. They define no Gymnasium wrapper: the
wrappers of :mod:`ldp_gym.wrappers` and the private agents apply them.

* :mod:`.base`: the mechanisms, namely Laplace, Gaussian, the l2 ball, Gaussian statistics,
  randomized response and private episode means;
* :mod:`.continual`: continual counting (:class:`TreeMechanism`, :class:`GramTreeMechanism`);
* :mod:`.calibration`: the noise scales and grids;
* :mod:`.noise`: generators, noise streams, float-safe noise, tracing;
* :mod:`.compiled`: the mechanisms' compiled transforms (numba), for the agents' kernels;
* :mod:`.audit`: the statistical privacy audit;
* :mod:`.privacy`: :class:`Privacy`, the guarantee an agent or wrapper states;
* :mod:`.shuffle`: the shuffle model's summation of bits (the privacy blanket);
* :mod:`.distributed`: distributed DP's sum by secure aggregation of discrete noise shares.
"""

from ldp_gym.validation import (  # the mechanisms' validation, re-exported
    MIN_DELTA,
    check_bool,
    check_bounds,
    check_delta,
    check_epsilon,
    check_finite,
    check_input,
    check_int,
    check_real,
)

from . import audit, calibration, compiled, continual, distributed, noise, privacy, shuffle
from .base import (
    PART_KINDS,
    GaussianEpisodeMean,
    GaussianMechanism,
    GaussianPart,
    GaussianStatistics,
    L2BallMechanism,
    LaplaceMechanism,
    Mechanism,
    PrivateEpisodeMean,
    RandomizedResponse,
)
from .calibration import (
    GRID_BITS,
    MAGNITUDE_BITS,
    MIN_GRID,
    SAMPLER_Z_MAX,
    analytic_gaussian_sigma,
    check_sampler_tail,
    classic_gaussian_sigma,
    gaussian_delta,
    grid_step,
    l2_ball_radius,
    laplace_scale,
)
from .continual import GramTreeMechanism, TreeMechanism
from .noise import (
    MECHANISM_KEY,
    NoiseStream,
    SecureGenerator,
    clip_l2,
    gaussian_grid_noise,
    make_rng,
    recording,
    snap,
    tracing,
)
from .privacy import Privacy

__all__ = ["GRID_BITS", "MAGNITUDE_BITS", "MECHANISM_KEY", "MIN_DELTA", "MIN_GRID", "PART_KINDS",
           "SAMPLER_Z_MAX", "check_bool", "check_bounds", "check_delta", "check_epsilon", "check_finite",
           "check_input", "check_int", "check_real", "check_sampler_tail", "GaussianEpisodeMean",
           "GaussianMechanism", "GramTreeMechanism", "GaussianPart", "GaussianStatistics",
           "L2BallMechanism", "LaplaceMechanism", "Mechanism", "NoiseStream", "Privacy",
           "PrivateEpisodeMean", "RandomizedResponse", "SecureGenerator", "TreeMechanism",
           "analytic_gaussian_sigma", "audit", "calibration", "classic_gaussian_sigma", "clip_l2",
           "compiled", "continual", "distributed", "gaussian_delta", "gaussian_grid_noise", "grid_step",
           "l2_ball_radius", "laplace_scale", "make_rng", "noise", "privacy", "recording", "shuffle",
           "snap", "tracing"]
