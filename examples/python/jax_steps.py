#!/usr/bin/env python3
"""jax_steps: jitted FP32 JAX training steps (an MLP, a small convolutional
net) with plain SGD on synthetic data, timed after warm-up; can save the
first layer's final weights and the loss and compare them with another
run's."""
import argparse
import os
import sys
import time

SKIP = 77

DESCRIPTION = """\
Runs jitted FP32 JAX training steps (jax.value_and_grad, plain SGD) of one
model on synthetic data and prints one final line on stdout:

  result: framework=jax model=M device=D size=S steps=N ms_per_step=X
          loss=L

(one line), with ' rel_err=E' at its end under --against. D is the platform
of jax.devices()[0] (gpu or cpu), X the mean wall time of the N timed steps
after the warm-up steps (jax.block_until_ready before and after), L the
loss of the last step (%.6g). Weights and data come from a NumPy generator
seeded with --seed: the same arguments give the same steps on the same
data on every platform.

models:
  mlp  4 dense layers (4096 -> 4096 -> 4096 -> 4096 -> 1000, ReLU) on
       batch 1024; tiny: 32 wide, 10 classes, batch 8.
  cnn  4 convolutions through jax.lax.conv_general_dilated (NHWC, 3x3;
       3 -> 64 -> 128 -> 256 -> 256 channels, strides 1, 2, 2, 1, ReLU),
       mean pooling and a dense layer to 10 classes, on batch 64 at
       64x64; tiny: 8 -> 16 -> 32 -> 32 channels, batch 4 at 16x16.

--save FILE writes, with np.save, a float32 vector: the last step's loss
followed by the first layer's final weights (about 64 MB for the full
mlp). --against FILE compares this run with such a file (a run of the same
model, size and seed) and prints rel_err, the larger of
|L - L'| / |L'| and max|W - W'| / max|W' - W0| (W the first layer's final
weights, W0 their initial values, the same for both runs): the difference
relative to what the steps changed.

XLA's default precision lets a GPU run FP32 products as TF32;
--precision highest asks for FP32 (jax.lax.Precision.HIGHEST). JAX does not
take most of the GPU's memory up front here: XLA_PYTHON_CLIENT_PREALLOCATE
is false unless set.

exit status:
  0   the steps ran and the result line was printed
  77  skipped, with a line 'skip: REASON' on stdout: jax or numpy not
      importable
  2   bad arguments, or a file for --against that does not match this run
  other  an error, with its traceback on stderr
"""

FULL = {
    'mlp': {'batch': 1024, 'features': 4096, 'width': 4096, 'classes': 1000},
    'cnn': {'batch': 64, 'image': 64, 'channels': (64, 128, 256, 256),
            'strides': (1, 2, 2, 1), 'classes': 10},
}
TINY = {
    'mlp': {'batch': 8, 'features': 32, 'width': 32, 'classes': 10},
    'cnn': {'batch': 4, 'image': 16, 'channels': (8, 16, 32, 32),
            'strides': (1, 2, 2, 1), 'classes': 10},
}
MLP_LAYERS = 4
LEARNING_RATE = 0.01
# Distinct batches drawn before timing; step i uses batch i % DATA_BATCHES.
DATA_BATCHES = 4


def skip(reason):
    print('skip: ' + reason, flush=True)
    sys.exit(SKIP)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog='jax_steps.py', description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--model', choices=('mlp', 'cnn'), default='mlp',
                   help='model (default mlp)')
    p.add_argument('--size', choices=('full', 'tiny'), default='full',
                   help='full: the sizes above; tiny: seconds on a CPU '
                        '(default full)')
    p.add_argument('--steps', type=int,
                   help='timed steps (default 20 full, 3 tiny)')
    p.add_argument('--warmup', type=int,
                   help='untimed steps first, the first one compiles '
                        '(default 3 full, 1 tiny)')
    p.add_argument('--seed', type=int, default=0,
                   help='seed of the weights and the data (default 0)')
    p.add_argument('--precision', choices=('default', 'highest'),
                   default='default',
                   help="precision of the products (default: XLA's)")
    p.add_argument('--save', metavar='FILE',
                   help="np.save the loss and the first layer's weights")
    p.add_argument('--against', metavar='FILE',
                   help='compare with the file of another run (rel_err)')
    args = p.parse_args(argv)
    full = args.size == 'full'
    if args.steps is None:
        args.steps = 20 if full else 3
    if args.warmup is None:
        args.warmup = 3 if full else 1
    if args.steps < 1:
        p.error('--steps must be at least 1')
    if args.warmup < 0:
        p.error('--warmup must not be negative')
    return args


def init_params(np, rng, model, cfg):
    """He-normal weights and zero biases, float32, from rng: a list of
    {'w', 'b'}, the first layer first."""
    if model == 'mlp':
        dims = ([cfg['features']] + [cfg['width']] * (MLP_LAYERS - 1) +
                [cfg['classes']])
        shapes = list(zip(dims[:-1], dims[1:]))
        fan_ins = dims[:-1]
    else:
        chans = (3,) + tuple(cfg['channels'])
        shapes = [(3, 3, cin, cout) for cin, cout in zip(chans, chans[1:])]
        fan_ins = [9 * cin for cin in chans[:-1]]
        shapes.append((chans[-1], cfg['classes']))
        fan_ins.append(chans[-1])
    params = []
    for shape, fan_in in zip(shapes, fan_ins):
        w = rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(np.sqrt(2.0 / fan_in))
        params.append({'w': w, 'b': np.zeros(shape[-1], np.float32)})
    return params


def make_data(np, rng, model, cfg, count):
    data = []
    for _ in range(count):
        if model == 'mlp':
            shape = (cfg['batch'], cfg['features'])
        else:
            shape = (cfg['batch'], cfg['image'], cfg['image'], 3)
        x = rng.standard_normal(shape, dtype=np.float32)
        y = rng.integers(0, cfg['classes'], cfg['batch'], dtype=np.int32)
        data.append((x, y))
    return data


def make_loss(jax, model, cfg, precision):
    jnp, lax = jax.numpy, jax.lax

    def mlp(params, x):
        for layer in params[:-1]:
            x = jax.nn.relu(
                jnp.matmul(x, layer['w'], precision=precision) + layer['b'])
        return jnp.matmul(x, params[-1]['w'],
                          precision=precision) + params[-1]['b']

    def cnn(params, x):
        for layer, stride in zip(params[:-1], cfg['strides']):
            x = lax.conv_general_dilated(
                x, layer['w'], window_strides=(stride, stride),
                padding='SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'),
                precision=precision)
            x = jax.nn.relu(x + layer['b'])
        x = jnp.mean(x, axis=(1, 2))
        return jnp.matmul(x, params[-1]['w'],
                          precision=precision) + params[-1]['b']

    forward = mlp if model == 'mlp' else cnn

    def loss(params, x, y):
        logp = jax.nn.log_softmax(forward(params, x))
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return loss


def make_step(jax, loss):
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        params = jax.tree_util.tree_map(
            lambda p, g: p - LEARNING_RATE * g, params, grads)
        return params, value

    return jax.jit(step)


def save_run(np, path, loss, weights):
    """The loss, then the weights flattened, as one float32 vector (the
    file named exactly path: np.save on an open file adds no suffix)."""
    vec = np.concatenate((np.array([loss], np.float32),
                          np.asarray(weights, np.float32).ravel()))
    with open(path, 'wb') as f:
        np.save(f, vec)


def compare_run(np, path, loss, weights, initial):
    """rel_err against the run saved in path, or None with a message on
    stderr when the file does not match this run."""
    with open(path, 'rb') as f:
        other = np.load(f)
    weights = np.asarray(weights, np.float64).ravel()
    if other.ndim != 1 or other.size != weights.size + 1:
        print('jax_steps: %s holds %d values; this run has %d (another '
              'model or size?)' % (path, other.size, weights.size + 1),
              file=sys.stderr)
        return None
    other = other.astype(np.float64)
    other_loss, other_w = other[0], other[1:]
    change = np.max(np.abs(other_w - np.asarray(initial, np.float64).ravel()))
    loss_err = abs(loss - other_loss) / max(abs(other_loss), 1e-30)
    w_err = np.max(np.abs(weights - other_w)) / max(change, 1e-30)
    return float(max(loss_err, w_err))


def run(jax, np, args):
    cfg = (FULL if args.size == 'full' else TINY)[args.model]
    precision = (jax.lax.Precision.HIGHEST if args.precision == 'highest'
                 else None)
    rng = np.random.default_rng(args.seed)
    host_params = init_params(np, rng, args.model, cfg)
    initial = host_params[0]['w'].copy()
    count = min(DATA_BATCHES, args.warmup + args.steps)
    data = [jax.device_put(b) for b in
            make_data(np, rng, args.model, cfg, count)]
    params = jax.device_put(host_params)
    step = make_step(jax, make_loss(jax, args.model, cfg, precision))
    platform = jax.devices()[0].platform

    loss = None
    for i in range(args.warmup):
        params, loss = step(params, *data[i % count])
    jax.block_until_ready(params)
    start = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.steps):
        params, loss = step(params, *data[i % count])
    jax.block_until_ready((params, loss))
    elapsed = time.perf_counter() - start

    value = float(loss)
    weights = np.asarray(params[0]['w'])
    tail = ''
    if args.save:
        save_run(np, args.save, value, weights)
    if args.against:
        err = compare_run(np, args.against, value, weights, initial)
        if err is None:
            return 2
        tail = ' rel_err=%.3g' % err
    print('result: framework=jax model=%s device=%s size=%s steps=%d '
          'ms_per_step=%.3f loss=%.6g%s' %
          (args.model, platform, args.size, args.steps,
           1000.0 * elapsed / args.steps, value, tail), flush=True)
    return 0


def main(argv):
    args = parse_args(argv)
    os.environ.setdefault('XLA_PYTHON_CLIENT_PREALLOCATE', 'false')
    try:
        import numpy as np
    except Exception as e:
        skip('numpy not importable: %s: %s' % (type(e).__name__, e))
    try:
        import jax
    except Exception as e:
        skip('jax not importable: %s: %s' % (type(e).__name__, e))
    return run(jax, np, args)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
