"""A small random-walk Metropolis sampler written against the legacy host_callback API.

It shows the three uses the survey found most often:
* a progress bar: `id_tap` inside `lax.cond` inside `fori_loop`, with `result=` threading the
  loop counter (pattern T1);
* a `call` to numpy on the host for a quantity the sampler needs back (pattern C1/C6);
* an `id_print` of an intermediate value (whose returned value is used).

Migrate it with `hcmigrate examples/` and check the migration with
`hcmigrate verify examples/mcmc_progress.py --reference legacy` (see docs/verify.md).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import host_callback as hcb

NUM_STEPS = 200
PRINT_EVERY = 50
PROGRESS = []  # what the progress bar saw, on the host


def _update_progress(step, transforms):
    PROGRESS.append(int(step))
    print(f"sampling: step {int(step)}/{NUM_STEPS}")


def log_density(x):
    # A banana-shaped 2-d target.
    return -0.5 * (x[0] ** 2 / 4.0 + (x[1] - 0.25 * x[0] ** 2) ** 2)


def host_acceptance_summary(accepted):
    # Runs on the host with numpy: mean acceptance and its standard error.
    accepted = np.asarray(accepted, dtype=np.float32)
    mean = accepted.mean()
    stderr = accepted.std() / np.sqrt(accepted.size)
    return np.array([mean, stderr], dtype=np.float32)


@jax.jit
def sample(key, x0):
    def step(i, carry):
        key, x, samples, accepted = carry
        i = jax.lax.cond(
            i % PRINT_EVERY == 0,
            lambda _: hcb.id_tap(_update_progress, i, result=i),
            lambda _: i,
            operand=None,
        )
        key, k_prop, k_acc = jax.random.split(key, 3)
        proposal = x + 0.8 * jax.random.normal(k_prop, x.shape)
        log_ratio = log_density(proposal) - log_density(x)
        accept = jnp.log(jax.random.uniform(k_acc)) < log_ratio
        x = jnp.where(accept, proposal, x)
        return key, x, samples.at[i].set(x), accepted.at[i].set(accept)

    init = (key, x0, jnp.zeros((NUM_STEPS, 2)), jnp.zeros(NUM_STEPS, dtype=bool))
    _, _, samples, accepted = jax.lax.fori_loop(0, NUM_STEPS, step, init)
    summary = hcb.call(host_acceptance_summary, accepted,
                       result_shape=jax.ShapeDtypeStruct((2,), jnp.float32))
    posterior_mean = hcb.id_print(samples.mean(axis=0), what="posterior mean")
    return posterior_mean, summary


def main():
    posterior_mean, summary = sample(jax.random.PRNGKey(0), jnp.zeros(2))
    print("acceptance rate:", summary[0])
    return posterior_mean, summary


if __name__ == "__main__":
    main()
