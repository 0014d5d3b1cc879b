"""Objects of JAX libraries the project does not own, built and jitted as their own docs do.

Each factory returns a ``jitbench.Target``: the object, the call its users jit, and its
arguments. The usage each follows is named in a comment with its source. The libraries
are the ``gallery`` extra (pyproject.toml); ``tests/test_gallery.py`` pins each verdict.
"""

from __future__ import annotations

import functools
import weakref

import blackjax
import chex
import diffrax
import distrax
import e3nn_jax as e3nn
import equinox as eqx
import exponax as ex
import flax.linen as nn
import flax.struct
import gpjax as gpx
import gymnax
import haiku as hk
import interpax
import jax
import jax.numpy as jnp
import jax.random as jr
import jax_cosmo as jc
import jax_dataclasses as jdc
import jaxlie
import jaxopt
import jumanji
import lineax as lx
import numpy as np
import numpyro.distributions as ndist
import optax
import pgx
import pytreeclass as tc
import quax
import quax.examples.lora as lora
import sympy
import sympy2jax
from distreqx import distributions as dx_dists
from dynamax.hidden_markov_model import GaussianHMM
from evosax.algorithms import CMA_ES
from flax.training import train_state
from flowjax.distributions import Normal as FlowNormal
from flowjax.flows import coupling_flow
from jax.experimental import sparse
from jax.scipy.interpolate import RegularGridInterpolator
from ott.geometry import pointcloud
from ott.solvers import linear
from penzai import pz
from tensorflow_probability.substrates import jax as tfp
from tinygp import GaussianProcess, kernels

from jitbench import Inputs, Target


# chex README, "Dataclass": a @chex.dataclass (a Mapping, mutable) passed to a jitted function.
@chex.dataclass
class Parameters:
    x: chex.ArrayDevice
    y: chex.ArrayDevice
    lr: float = 0.1


@jax.jit
def chex_apply(p, z):
    return p.x @ z + p.y * p.lr


def chex_parameters() -> Target:
    params = Parameters(x=jnp.ones((2, 2)), y=jnp.ones((1, 2)))
    return Target(params, (jnp.arange(4.0).reshape(2, 2),), call=chex_apply)


# optax README, "Quick Start": optax.adam's state, a step jitted over it closing over the optimizer.
OPTIMIZER = optax.adam(1e-2)
XS, YS = jnp.linspace(-1, 1, 12).reshape(4, 3), jnp.array([1.0, -1.0, 0.5, 0.0])


@jax.jit
def opt_step(opt_state, params):
    grads = jax.grad(lambda p: jnp.mean(optax.l2_loss(XS @ p["w"], YS)))(params)
    updates, opt_state = OPTIMIZER.update(grads, opt_state)
    return optax.apply_updates(params, updates), opt_state


def optax_state() -> Target:
    return Target(OPTIMIZER.init({"w": jnp.ones(3)}), ({"w": jnp.ones(3)},), call=opt_step)


# flax, flax.training.train_state: TrainState.create(apply_fn, params, tx=optax.adam(...)) and a
# jitted train_step; step is a Python int leaf, apply_fn and tx auxiliary data.
class Mlp(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(nn.relu(nn.Dense(4)(x)))


BATCH = jnp.linspace(-1, 1, 6).reshape(2, 3)


@jax.jit
def train_step(state, x):
    grads = jax.grad(lambda p: jnp.mean(state.apply_fn({"params": p}, x) ** 2))(state.params)
    return state.apply_gradients(grads=grads).params


def train_state_() -> Target:
    model = Mlp()
    params = model.init(jax.random.key(0), BATCH)["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-2))
    return Target(state, (BATCH,), call=train_step)


# numpyro docs, numpyro.distributions: a Distribution is a pytree; loc and scale stay floats.
@jax.jit
def log_prob(d, x):
    return d.log_prob(x)


def numpyro_normal() -> Target:
    return Target(ndist.Normal(0.0, 1.0), (jnp.linspace(-2.0, 2.0, 8),), call=log_prob)


# tinygp, "Modeling frameworks" and "Fitting a GP": a kernel (eqx.Module) into a jitted loss.
TX = jnp.linspace(0.0, 5.0, 12)


@jax.jit
def kernel_loss(kernel, y):
    return -GaussianProcess(kernel, TX, diag=1e-3).log_probability(y)


def tinygp_kernel() -> Target:
    return Target(4.0 * kernels.ExpSquared(scale=1.5), (jnp.sin(TX),), call=kernel_loss)


# evosax README, "Basic evosax API Usage": CMA_ES; its ask is jitted with a static self.
SOLUTION = jnp.zeros(3)
ES = CMA_ES(population_size=8, solution=SOLUTION)
PARAMS = ES.default_params
STATE = ES.init(jax.random.key(0), SOLUTION, PARAMS)


def evosax_cma_es() -> Target:
    strategy = CMA_ES(population_size=8, solution=SOLUTION)
    return Target(strategy, (jax.random.key(1), STATE, PARAMS), call="ask")


# diffrax "Getting started": diffeqsolve (eqx.filter_jit inside) with a PIDController.
TERM = diffrax.ODETerm(lambda t, y, args: -args * y)
SAVEAT = diffrax.SaveAt(ts=jnp.array([0.0, 1.0, 2.0, 3.0]))


def solve(controller, y0):
    return diffrax.diffeqsolve(TERM, diffrax.Dopri5(), t0=0.0, t1=3.0, dt0=0.1, y0=y0, args=1.0,
                               saveat=SAVEAT, stepsize_controller=controller).ys  # fmt: skip


def diffrax_controller() -> Target:
    controller = diffrax.PIDController(rtol=1e-5, atol=1e-5)
    return Target(controller, (jnp.array([1.0, 0.5]),), call=solve)


# jaxlie README, "Example usage for SE(3)": a transform applied in a jitted function.
@jax.jit
def transform(pose, points):
    return jax.vmap(lambda q: pose @ q)(points)


def jaxlie_se3() -> Target:
    pose = jaxlie.SE3.from_rotation_and_translation(
        rotation=jaxlie.SO3.from_x_radians(np.pi / 2.0), translation=np.array([1.0, 2.0, 3.0])
    )
    return Target(pose, (jnp.array([[0.5, -1.0, 2.0], [1.0, 0.0, 0.0]]),), call=transform)


# pytreeclass README: a TreeClass (frozen once built; .at["a"].set(2.0) is a new tree) passed
# to a jitted function.
@tc.autoinit
class Tree(tc.TreeClass):
    a: float = 1.0
    b: tuple[float, float] = (2.0, 3.0)
    c: jax.Array = jnp.array([4.0, 5.0, 6.0])

    def __call__(self, x):
        return self.a + self.b[0] + self.c + x


@jax.jit
def call_tree(tree, x):
    return tree(x)


def pytreeclass_tree() -> Target:
    return Target(Tree(), (1.0,), call=call_tree)


# dm-haiku README, "Quickstart": hk.transform's init gives the params dict, apply jitted once.
FORWARD = hk.transform(lambda x: hk.nets.MLP([16, 8, 4])(x))
HX = jnp.linspace(-1.0, 1.0, 24).reshape(2, 12)
APPLY = jax.jit(FORWARD.apply)


def haiku_apply(params, x):
    return APPLY(params, None, x)


def haiku_params() -> Target:
    return Target(FORWARD.init(jax.random.key(42), HX), (HX,), call=haiku_apply)


# JAXopt, "Unconstrained optimization": jax.jit(solver.run) made once per solver and reused.
XM = jnp.linspace(-1.0, 1.0, 24).reshape(8, 3)
YV = jnp.array([1.0, 0.0, -1.0, 0.5, 0.2, -0.3, 0.9, 0.1])
_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def ridge(w, l2reg, X, y):
    return jnp.mean((X @ w - y) ** 2) + 0.5 * l2reg * jnp.sum(w**2)


def run(solver, w0):
    jitted = _RUNS.get(solver)
    if jitted is None:
        jitted = _RUNS[solver] = jax.jit(solver.run)
    return jitted(w0, l2reg=0.1, X=XM, y=YV).params


def jaxopt_lbfgs() -> Target:
    return Target(jaxopt.LBFGS(fun=ridge, maxiter=1), (jnp.zeros(3),), call=run)


# equinox docs, eqx.nn.MLP: a deep model, called through eqx.filter_jit.
@eqx.filter_jit
def forward(model, x):
    return model(x)


def deep_mlp() -> Target:
    model = eqx.nn.MLP(4, 2, 8, depth=99, key=jax.random.key(0))
    return Target(model, (jnp.ones(4),), call=forward)


# distrax README, "Jitting Distrax": jax.jit(lambda d_0, d_1: d_0.kl_divergence(d_1)) over two
# MultivariateNormalDiag; the first is the object, the second the argument.
jitted_kl = jax.jit(lambda d_0, d_1: d_0.kl_divergence(d_1))


def distrax_mvn_diag() -> Target:
    dist_0 = distrax.MultivariateNormalDiag(jnp.array([-1.0, 0.0, 1.0]), jnp.array([0.1, 0.2, 0.3]))
    dist_1 = distrax.MultivariateNormalDiag(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.2, 0.3, 0.4]))
    return Target(dist_0, (dist_1,), call=jitted_kl)


# lineax docs, "Tags": MatrixLinearOperator(matrix, lx.positive_semidefinite_tag) solved by
# lx.linear_solve (eqx.filter_jit inside), whose default solver picks Cholesky from the tag.
LX_KEY, LX_VECTOR = jr.split(jr.key(0))
LX_FACTOR = jr.normal(LX_KEY, (4, 4))


def psd_solve(operator, vector):
    return lx.linear_solve(operator, vector).value


def lineax_psd_operator() -> Target:
    matrix = LX_FACTOR @ LX_FACTOR.T + jnp.eye(4)
    operator = lx.MatrixLinearOperator(matrix, lx.positive_semidefinite_tag)
    return Target(operator, (jr.normal(LX_VECTOR, (4,)),), call=psd_solve)


# flowjax docs, "Getting started": coupling_flow(key, base_dist=Normal(jnp.zeros(...))), one
# small layer; "FAQ, When to JIT": methods are not jitted, eqx.filter_jit(flow.sample)(...) at
# each call (log_prob here).
FLOW_DATA = jr.uniform(jr.key(1), (20, 2))


def flow_log_prob(flow, x):
    return eqx.filter_jit(flow.log_prob)(x)


def flowjax_coupling() -> Target:
    flow = coupling_flow(jr.key(2), base_dist=FlowNormal(jnp.zeros(2)), flow_layers=1, nn_width=4)
    return Target(flow, (FLOW_DATA,), call=flow_log_prob)


# ott-jax README, "Example": two point clouds' PointCloud geometry solved by
# jax.jit(linear.solve)(geom, a, b), a jit wrapper made at each call; the coupling it plots.
# epsilon=0.1 (PointCloud's own argument): Sinkhorn converges in 10 iterations, not 90, and the
# call without jit (a Python loop) takes 0.1 s, not 2 s.
OT_KEYS = jax.random.split(jax.random.key(42), 4)
OT_A = jax.random.uniform(OT_KEYS[2], (6,)) + 0.2
OT_B = jax.random.uniform(OT_KEYS[3], (11,)) + 0.2


def ot_coupling(geom, a, b):
    return jax.jit(linear.solve)(geom, a, b).matrix


def ott_point_cloud() -> Target:
    x = jax.random.uniform(OT_KEYS[0], (6, 2))
    y = jax.random.uniform(OT_KEYS[1], (11, 2))
    geom = pointcloud.PointCloud(x, y, epsilon=0.1)
    return Target(geom, (OT_A / OT_A.sum(), OT_B / OT_B.sum()), call=ot_coupling)


# distreqx README, "Quick example": MultivariateNormalDiag(mu, sigma), log_prob of a sample; an
# eqx.Module, jitted as equinox's docs jit one (eqx.filter_jit). distrax's object, in equinox.
@eqx.filter_jit
def dx_log_prob(dist, x):
    return dist.log_prob(x)


def distreqx_mvn_diag() -> Target:
    dist = dx_dists.MultivariateNormalDiag(jnp.array([-1.0, 0.0, 1.0]), jnp.array([0.1, 0.2, 0.3]))
    return Target(dist, (dist.sample(jax.random.key(1234)),), call=dx_log_prob)


# jax-cosmo README: a Planck15 cosmology into jax.jit(angular_diameter_distance); a gamma
# growth index (Cosmology's own argument) makes its tree_unflatten raise under jit only.
COSMO_A = jnp.linspace(0.2, 1.0, 8)
angular_diameter_distance = jax.jit(jc.background.angular_diameter_distance)


def cosmo_planck15() -> Target:
    return Target(jc.Planck15(), (COSMO_A,), call=angular_diameter_distance)


def cosmo_planck15_gamma() -> Target:
    return Target(jc.Planck15(gamma=0.55), (COSMO_A,), call=angular_diameter_distance)


# TFP on JAX, "GaussianProcess": a GP of an ExponentiatedQuadratic kernel, its log_prob
# jitted with the GP as an argument (a TFP distribution is a pytree on JAX).
tfd, psd = tfp.distributions, tfp.math.psd_kernels
GP_X = jnp.linspace(0.0, 1.0, 10)[:, None]
gp_log_prob = jax.jit(lambda gp, y: gp.log_prob(y))


def tfp_gaussian_process() -> Target:
    kernel = psd.ExponentiatedQuadratic(amplitude=jnp.float32(1.0), length_scale=jnp.float32(0.5))
    gp = tfd.GaussianProcess(kernel=kernel, index_points=GP_X, observation_noise_variance=0.1)
    return Target(gp, (jnp.sin(6.0 * GP_X[:, 0]),), call=gp_log_prob)


# gpjax docs, "Regression": Prior(Zero mean, RBF kernel) * Gaussian likelihood, and
# jax.jit(conjugate_mll)(posterior, dataset); gpjax's modules are nnx.Modules.
GP_DATA = gpx.Dataset(X=GP_X, y=jnp.sin(6.0 * GP_X))
conjugate_mll = jax.jit(gpx.objectives.conjugate_mll)


def gpjax_posterior() -> Target:
    prior = gpx.gps.Prior(mean_function=gpx.mean_functions.Zero(), kernel=gpx.kernels.RBF())
    posterior = prior * gpx.likelihoods.Gaussian(num_datapoints=GP_DATA.n)
    return Target(posterior, (GP_DATA,), call=conjugate_mll)


# sympy2jax README: SymbolicModule([1.0 * cos(x), 2.0 * sin(x)]) called by keyword, an
# eqx.Module jitted as equinox's docs jit one; 1.0 and 2.0 are its (private) parameters.
X_SYM = sympy.symbols("x_sym")


@eqx.filter_jit
def symbolic(module, **kwargs):
    return module(**kwargs)


def sympy2jax_module() -> Target:
    module = sympy2jax.SymbolicModule([1.0 * sympy.cos(X_SYM), 2.0 * sympy.sin(X_SYM)])
    return Target(module, Inputs(x_sym=jnp.linspace(0.0, 1.0, 3)), call=symbolic)


# interpax, Interpolator1D: an eqx.Module built from knots and values, called in a jitted
# function as equinox's docs jit one (eqx.filter_jit); extrap, a bool leaf, is hashed.
INTERP_X = jnp.linspace(0.0, 2.0 * np.pi, 20)


@eqx.filter_jit
def interpolate(interp, xq):
    return interp(xq)


def interpax_interpolator() -> Target:
    interp = interpax.Interpolator1D(INTERP_X, jnp.sin(INTERP_X), method="cubic")
    return Target(interp, (jnp.linspace(0.0, 2.0 * np.pi, 7),), call=interpolate)


# blackjax README, "Quickstart": nuts = blackjax.nuts(logdensity, step_size, inverse_mass_matrix),
# state = nuts.init(position), step = jax.jit(nuts.step), step(key, state): the state audited.
def nuts_logdensity(x):
    return -0.5 * jnp.sum(x["loc"] ** 2)


NUTS = blackjax.nuts(nuts_logdensity, 0.5, jnp.ones(2))
nuts_step = jax.jit(NUTS.step)


def nuts_position(state, key):
    return nuts_step(key, state)[0].position


def blackjax_nuts_state() -> Target:
    return Target(NUTS.init({"loc": jnp.array([1.0, -1.0])}), (jr.key(0),), call=nuts_position)


# dynamax docs, "Casino HMM" / GaussianHMM: params, _ = hmm.initialize(key), and
# hmm.marginal_log_prob(params, emissions) (hmm_filter jitted inside), jitted over the params.
HMM = GaussianHMM(num_states=2, emission_dim=1)
HMM_EMISSIONS = jnp.linspace(-1.0, 1.0, 4)[:, None]
marginal_log_prob = jax.jit(HMM.marginal_log_prob)


def dynamax_hmm_params() -> Target:
    params, _ = HMM.initialize(jr.key(0))
    return Target(params, (HMM_EMISSIONS,), call=marginal_log_prob)


# penzai docs, "Penzai's design": pz.nn.Linear.from_config(...) and pz.variable_jit, which
# passes its Parameters' values to jax.jit as arguments.
penzai_apply = pz.variable_jit(lambda layer, x: layer(x).unwrap("out"))


def penzai_linear() -> Target:
    layer = pz.nn.Linear.from_config(
        name="lin", init_base_rng=jr.key(0), input_axes={"features": 3}, output_axes={"out": 2}
    )
    return Target(layer, (pz.nx.wrap(jnp.arange(3.0)).tag("features"),), call=penzai_apply)


# penzai docs, "Mutable State and Variables": a layer whose call updates a StateVariable,
# called through pz.variable_jit, which writes the new value back after the call.
@pz.pytree_dataclass
class PenzaiCounted(pz.nn.Layer):
    scale: pz.Parameter
    count: pz.StateVariable

    def __call__(self, x, **side_inputs):
        self.count.value = self.count.value + 1
        return x * self.scale.value


penzai_counted_apply = pz.variable_jit(lambda layer, x: layer(x))


def penzai_counted() -> Target:
    layer = PenzaiCounted(
        scale=pz.Parameter(value=jnp.full((3,), 2.0), label="scale"),
        count=pz.StateVariable(value=jnp.array(0), label="count"),
    )
    return Target(layer, (jnp.arange(3.0),), call=penzai_counted_apply)


# jumanji README: env = jumanji.make("Snake-v1"), state, timestep = jax.jit(env.reset)(key),
# jax.jit(env.step)(state, action): the env audited, its step jitted where it is called.
SNAKE_KEY = jr.key(0)


def snake_step(env, state, action):
    return jax.jit(env.step)(state, action)


def jumanji_snake() -> Target:
    env = jumanji.make("Snake-v1")
    state, _ = jax.jit(env.reset)(SNAKE_KEY)
    return Target(env, (state, jnp.array(0, jnp.int32)), call=snake_step)


# The same step jitted once per env and kept for the loop (step = jax.jit(env.step)), as
# JAXopt's run above: the env is bound in the jitted function, outside jit's key.
_SNAKE_STEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def snake_step_kept(env, state, action):
    step = _SNAKE_STEPS.get(env)
    if step is None:
        step = _SNAKE_STEPS[env] = jax.jit(env.step)
    return step(state, action)


def jumanji_snake_kept() -> Target:
    env = jumanji.make("Snake-v1")
    state, _ = jax.jit(env.reset)(SNAKE_KEY)
    return Target(env, (state, jnp.array(0, jnp.int32)), call=snake_step_kept)


# jax.scipy.interpolate.RegularGridInterpolator, a registered pytree, as scipy's users build
# it (points, values), into a jitted function; three query points.
RGI_X, RGI_Y = jnp.linspace(0.0, 1.0, 5), jnp.linspace(0.0, 2.0, 7)


@jax.jit
def interpolate_grid(interp, points):
    return interp(points)


def grid_interpolator() -> Target:
    values = jnp.sin(RGI_X[:, None]) * jnp.cos(RGI_Y[None, :])
    points = jnp.array([[0.5, 1.0], [0.2, 0.3], [0.9, 1.9]])
    return Target(RegularGridInterpolator((RGI_X, RGI_Y), values), (points,), call=interpolate_grid)


# gymnax README: env, env_params = gymnax.make(...), env.step(key, state, action, env_params);
# CartPole's step (jitted by gymnax with a static self) jitted once, the params audited.
CARTPOLE, _ = gymnax.make("CartPole-v1")
cartpole_step = jax.jit(CARTPOLE.step)
CP_KEYS = jr.split(jr.key(0), 2)
CP_STATE = CARTPOLE.reset(CP_KEYS[0], CARTPOLE.default_params)[1]


def cartpole_obs(params, key, state, action):
    return cartpole_step(key, state, action, params)[0]


def gymnax_cartpole_params() -> Target:
    _, params = gymnax.make("CartPole-v1")
    return Target(params, (CP_KEYS[1], CP_STATE, jnp.array(1)), call=cartpole_obs)


# pgx README: env = pgx.make(...), init = jax.jit(env.init), step = jax.jit(env.step), and the
# loop state = step(state, action): the state audited (tic-tac-toe, unbatched).
TIC_TAC_TOE = pgx.make("tic_tac_toe")
pgx_init, pgx_step = jax.jit(TIC_TAC_TOE.init), jax.jit(TIC_TAC_TOE.step)


def pgx_state() -> Target:
    return Target(pgx_init(jr.key(0)), (jnp.int32(4),), call=pgx_step)


# flax.struct docs: a user's own @flax.struct.dataclass, a flag as pytree_node=False, jitted.
@flax.struct.dataclass
class Affine:
    w: jax.Array
    b: jax.Array
    relu: bool = flax.struct.field(pytree_node=False, default=True)


@jax.jit
def affine(layer, x):
    y = layer.w @ x + layer.b
    return jax.nn.relu(y) if layer.relu else y


def flax_struct_affine() -> Target:
    return Target(Affine(jnp.eye(3) * 2.0, jnp.zeros(3)), (jnp.arange(3.0) - 1.0,), call=affine)


# jax.experimental.sparse docs: M_sp = sparse.BCOO.fromdense(M), then M_sp @ y, jitted with the
# matrix an argument.
@jax.jit
def sparse_matvec(matrix, y):
    return matrix @ y


def sparse_bcoo() -> Target:
    dense = jnp.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0], [0.0, 0.0, 4.0]])
    return Target(sparse.BCOO.fromdense(dense), (jnp.arange(3.0),), call=sparse_matvec)


# gymnax README, "Basic gymnax API Usage": env, env_params = gymnax.make(...), env.step(key,
# state, action, env_params), whose step gymnax jits itself with a static self (hashed by
# identity). Catch-bsuite keeps two ints; its state made once from another env, since reset
# is jitted the same way and would keep every env it is called on.
GYM_KEY = jr.key(0)
CATCH, CATCH_PARAMS = gymnax.make("Catch-bsuite")
CATCH_STATE = CATCH.reset(GYM_KEY, CATCH_PARAMS)[1]


def gymnax_catch() -> Target:
    env, _ = gymnax.make("Catch-bsuite")
    return Target(env, (GYM_KEY, CATCH_STATE, 1, CATCH_PARAMS), call="step")


# quax README, LoRA: an eqx.nn.Linear made LoRA by lora.loraify, called through
# quax.quaxify(run), jitted as jax.jit(quax.quaxify(run)): the quaxify is part of the call.
LORA_KEYS = jr.split(jr.PRNGKey(0), 3)


def lora_run(model, x):  # the README's run
    return model(x)


lora_call = jax.jit(quax.quaxify(lora_run))


def quax_lora() -> Target:
    linear = eqx.nn.Linear(10, 12, key=LORA_KEYS[0])
    model = lora.loraify(linear, rank=2, key=LORA_KEYS[2])
    return Target(model, (jr.normal(LORA_KEYS[1], (10,)),), call=lora_call)


# flax.linen docs, nn.Dense: variables = model.init(key, x), model.apply(variables, x); the
# module a static argument of the jitted apply (linen modules hash by their fields).
DENSE_X = jnp.linspace(-1.0, 1.0, 12).reshape(2, 6)


@functools.partial(jax.jit, static_argnums=0)
def dense_apply(model, variables, x):
    return model.apply(variables, x)


def linen_dense() -> Target:
    model = nn.Dense(features=4)
    return Target(model, (model.init(jax.random.key(0), DENSE_X), DENSE_X), call=dense_apply)


# e3nn-jax README: array = e3nn.normal("0e + 1o", key), an IrrepsArray (irreps static, the
# array traced), into jax.jit(e3nn.tensor_square), which returns an IrrepsArray of other irreps
# and another shape: an operation, not a step whose output a loop feeds back.
square = jax.jit(e3nn.tensor_square)


def irreps_array():
    return e3nn.normal("0e + 1o", jr.PRNGKey(0))


def e3nn_tensor_square() -> Target:
    return Target(irreps_array(), (), call=square, factory=irreps_array)


# exponax README "Quickstart": a Kuramoto-Sivashinsky stepper (an eqx.Module) rolled out from
# a random initial condition, the rollout jitted once per stepper as exponax's own
# data-generation scripts write it (jax.jit(ex.rollout(stepper, n))): each stepper its own
# jit, kept on it (a cycle the collector frees). n = 5.
KS_U0 = ex.ic.RandomTruncatedFourierSeries(num_spatial_dims=1, cutoff=5)(
    num_points=64, key=jr.PRNGKey(0)
)


def ks_rollout(stepper, u_0):
    jitted = stepper.__dict__.get("_collect_rollout")
    if jitted is None:
        jitted = jax.jit(ex.rollout(stepper, 5, include_init=True))
        object.__setattr__(stepper, "_collect_rollout", jitted)
    return jitted(u_0)


def ks_stepper():
    return ex.stepper.KuramotoSivashinskyConservative(
        num_spatial_dims=1, domain_extent=100.0, num_points=64, dt=0.1
    )


def exponax_stepper() -> Target:
    return Target(ks_stepper(), (KS_U0,), call=ks_rollout, factory=ks_stepper)


# jax_dataclasses README, "Static fields": a @jdc.pytree_dataclass with a jdc.Static field,
# passed to a function under @jdc.jit (registered by register_pytree_node: Python callbacks).
@jdc.pytree_dataclass
class StaticFlag:
    a: jax.Array
    b: jdc.Static[bool]


@jdc.jit
def jdc_apply(obj: StaticFlag, x: jax.Array) -> jax.Array:
    return obj.a * x if obj.b else obj.a + x


def jdc_static_flag() -> StaticFlag:
    return StaticFlag(a=jnp.arange(3.0), b=True)


def jdc_dataclass() -> Target:
    return Target(jdc_static_flag(), (jnp.ones(3),), call=jdc_apply, factory=jdc_static_flag)
