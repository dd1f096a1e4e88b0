#!/usr/bin/env python3
"""torch_steps: FP32 PyTorch training steps as users write them (a ResNet-50
with SGD, a GPT-2-small-sized transformer with AdamW) on synthetic data,
timed after warm-up; prints the time per step and the last step's loss."""
import argparse
import math
import sys
import time
import traceback

SKIP = 77

DESCRIPTION = """\
Runs FP32 PyTorch training steps of one model on synthetic data and prints
one final line on stdout:

  result: framework=torch model=M variant=V compile=0|1 device=D size=S
          steps=N ms_per_step=X loss=L

(one line), where X is the mean wall time of the N timed steps after the
warm-up steps (CUDA synchronized before and after) and L is the loss of the
last step (%.6g). The data come from a generator seeded with --seed and the
weights from torch.manual_seed(--seed): the same arguments give the same
steps on the same data, so the losses of two runs can be compared.

models:
  resnet50  ResNet-50 in plain torch.nn (bottleneck blocks [3, 4, 6, 3],
            BatchNorm, ReLU), SGD with momentum, cross-entropy over 1000
            classes; full: batch 64 at 224x224; tiny: widths from 8
            instead of 64, batch 2 at 32x32.
  gpt2      GPT-2-small-sized decoder (12 layers, d_model 768, 12 heads,
            MLP 3072, vocabulary 50257, context 1024, nn.Linear with bias,
            attention written as matmul, mask and softmax), AdamW; full:
            batch 8; tiny: 2 layers, d_model 64, 4 heads, vocabulary 256,
            context 32, batch 2.

variants:
  fp32      PyTorch's defaults: FP32 matrix products in IEEE FP32 (cuDNN's
            convolutions may use TF32, PyTorch's default for them).
  tf32      TF32 allowed for matrix products and cuDNN convolutions
            (torch.backends.*.fp32_precision = "tf32" where PyTorch has it,
            else allow_tf32 = True).
  autocast  torch.autocast(device, dtype=torch.bfloat16) around the
            forward pass and the loss.

--compile wraps the model in torch.compile(mode="reduce-overhead"), which
captures CUDA graphs on a GPU. Compiling happens in the warm-up steps (at
least 3 by default under --compile) and can take a minute or more on the
full size; it is not in ms_per_step.

GPU memory at full size, measured on a CPU: about 8 GB for resnet50
(110 MB a sample) and about 17 GB for gpt2 (2 GB a sample, most of it the
attention's heads x 1024 x 1024 matrices of 12 layers); --batch lowers
either.

exit status:
  0   the steps ran and the result line was printed
  77  skipped, with a line 'skip: REASON' on stdout: torch not importable,
      CUDA asked for and unavailable, or --compile asked for and
      torch.compile missing (PyTorch < 2.0) or failing on this machine
  2   bad arguments
  other  an error, with its traceback on stderr
"""

FULL = {
    'resnet50': {'batch': 64, 'image': 224, 'base': 64, 'classes': 1000},
    'gpt2': {'batch': 8, 'layers': 12, 'd_model': 768, 'heads': 12,
             'mlp': 3072, 'vocab': 50257, 'context': 1024},
}
TINY = {
    'resnet50': {'batch': 2, 'image': 32, 'base': 8, 'classes': 1000},
    'gpt2': {'batch': 2, 'layers': 2, 'd_model': 64, 'heads': 4,
             'mlp': 256, 'vocab': 256, 'context': 32},
}
# Distinct batches drawn before timing; step i uses batch i % DATA_BATCHES.
DATA_BATCHES = 4


def skip(reason):
    print('skip: ' + reason, flush=True)
    sys.exit(SKIP)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog='torch_steps.py', description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--model', choices=('resnet50', 'gpt2'),
                   default='resnet50', help='model (default resnet50)')
    p.add_argument('--variant', choices=('fp32', 'tf32', 'autocast'),
                   default='fp32', help='precision settings (default fp32)')
    p.add_argument('--compile', action='store_true',
                   help='torch.compile(model, mode="reduce-overhead")')
    p.add_argument('--device', choices=('cuda', 'cpu', 'auto'),
                   default='auto',
                   help='auto: cuda if available, else cpu (default auto)')
    p.add_argument('--size', choices=('full', 'tiny'), default='full',
                   help='full: the sizes above; tiny: seconds on a CPU '
                        '(default full)')
    p.add_argument('--steps', type=int,
                   help='timed steps (default 20 full, 3 tiny)')
    p.add_argument('--warmup', type=int,
                   help='untimed steps first (default 5 full, 1 tiny; '
                        'at least 3 under --compile)')
    p.add_argument('--batch', type=int,
                   help="batch size instead of the size's")
    p.add_argument('--seed', type=int, default=0,
                   help='seed of the weights and the data (default 0)')
    args = p.parse_args(argv)
    full = args.size == 'full'
    if args.steps is None:
        args.steps = 20 if full else 3
    if args.warmup is None:
        args.warmup = 5 if full else 1
        if args.compile:
            args.warmup = max(args.warmup, 3)
    if args.steps < 1:
        p.error('--steps must be at least 1')
    if args.warmup < 0:
        p.error('--warmup must not be negative')
    if args.compile and args.warmup < 1:
        p.error('--compile needs at least one warm-up step')
    if args.batch is not None and args.batch < 1:
        p.error('--batch must be at least 1')
    return args


def build_resnet50(torch, cfg):
    """ResNet-50 (v1.5: the stride on the 3x3 convolution) of base width
    cfg['base']: stages of [3, 4, 6, 3] bottleneck blocks."""
    nn = torch.nn

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * self.expansion
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride,
                                   padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.shortcut = None
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                    nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.shortcut is None else self.shortcut(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + identity)

    class ResNet50(nn.Module):
        def __init__(self, base, classes):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, base, 7, stride=2, padding=3, bias=False),
                nn.BatchNorm2d(base), nn.ReLU(inplace=True),
                nn.MaxPool2d(3, stride=2, padding=1))
            blocks = []
            cin = base
            for stage, count in enumerate((3, 4, 6, 3)):
                width = base << stage
                for i in range(count):
                    stride = 2 if stage > 0 and i == 0 else 1
                    blocks.append(Bottleneck(cin, width, stride))
                    cin = width * Bottleneck.expansion
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode='fan_out',
                                            nonlinearity='relu')

        def forward(self, x):
            y = self.pool(self.blocks(self.stem(x)))
            return self.fc(torch.flatten(y, 1))

    return ResNet50(cfg['base'], cfg['classes'])


def build_gpt2(torch, cfg):
    """A GPT-2-style decoder: pre-LayerNorm blocks of causal self-attention
    (explicit products, mask and softmax, so the products are cuBLAS
    calls) and a GELU MLP; the output projection shares the token
    embedding."""
    nn = torch.nn
    d, heads, context = cfg['d_model'], cfg['heads'], cfg['context']

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.register_buffer(
                'future',
                torch.ones(context, context, dtype=torch.bool).triu(1),
                persistent=False)

        def forward(self, x):
            b, t, _ = x.shape
            hd = d // heads
            q, k, v = self.qkv(x).split(d, dim=2)
            q = q.view(b, t, heads, hd).transpose(1, 2)
            k = k.view(b, t, heads, hd).transpose(1, 2)
            v = v.view(b, t, heads, hd).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
            scores = scores.masked_fill(self.future[:t, :t], float('-inf'))
            y = torch.matmul(torch.softmax(scores, dim=-1), v)
            return self.proj(y.transpose(1, 2).reshape(b, t, d))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.attn = SelfAttention()
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, cfg['mlp']),
                                     nn.GELU(approximate='tanh'),
                                     nn.Linear(cfg['mlp'], d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(cfg['vocab'], d)
            self.wpe = nn.Embedding(context, d)
            self.blocks = nn.Sequential(
                *[Block() for _ in range(cfg['layers'])])
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, cfg['vocab'], bias=False)
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)
            self.head.weight = self.wte.weight

        def forward(self, tokens):
            pos = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.wte(tokens) + self.wpe(pos)
            return self.head(self.ln_f(self.blocks(x)))

    return GPT2()


def make_data(torch, model, cfg, batch, count, seed):
    """count (input, target) pairs from a CPU generator seeded with seed:
    the same on every device and in every run."""
    g = torch.Generator()
    g.manual_seed(seed)
    data = []
    for _ in range(count):
        if model == 'resnet50':
            shape = (batch, 3, cfg['image'], cfg['image'])
            x = torch.randn(shape, generator=g)
            y = torch.randint(0, cfg['classes'], (batch,), generator=g)
        else:
            seq = torch.randint(0, cfg['vocab'], (batch, cfg['context'] + 1),
                                generator=g)
            x, y = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
        data.append((x, y))
    return data


def has_setting(obj, name):
    """Whether a torch.backends module has the setting name (the older
    ones raise AssertionError for an unknown name)."""
    try:
        getattr(obj, name)
    except (AttributeError, AssertionError):
        return False
    return True


def set_tf32(torch):
    """TF32 for matrix products and cuDNN convolutions, through the
    fp32_precision settings where PyTorch has them (2.9 and later; the
    older flags must not be mixed with them), else allow_tf32."""
    matmul = torch.backends.cuda.matmul
    if has_setting(matmul, 'fp32_precision'):
        matmul.fp32_precision = 'tf32'
    else:
        matmul.allow_tf32 = True
    cudnn = torch.backends.cudnn
    if (has_setting(cudnn, 'conv') and
            has_setting(cudnn.conv, 'fp32_precision')):
        cudnn.conv.fp32_precision = 'tf32'
    else:
        cudnn.allow_tf32 = True


def pick_device(torch, asked):
    cuda = torch.cuda.is_available()
    if asked == 'cuda' and not cuda:
        skip('CUDA asked for and not available to torch ' +
             torch.__version__)
    if asked == 'auto':
        return 'cuda' if cuda else 'cpu'
    return asked


def run(torch, args):
    device = pick_device(torch, args.device)
    cfg = dict((FULL if args.size == 'full' else TINY)[args.model])
    if args.batch is not None:
        cfg['batch'] = args.batch
    if args.variant == 'tf32':
        set_tf32(torch)
    if args.compile and not hasattr(torch, 'compile'):
        skip('torch.compile missing in torch ' + torch.__version__)

    torch.manual_seed(args.seed)
    if args.model == 'resnet50':
        model = build_resnet50(torch, cfg)
        opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9,
                              weight_decay=1e-4)
    else:
        model = build_gpt2(torch, cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4,
                                weight_decay=0.1)
    model.to(device).train()
    count = min(DATA_BATCHES, args.warmup + args.steps)
    data = [(x.to(device), y.to(device)) for x, y in
            make_data(torch, args.model, cfg, cfg['batch'], count,
                      args.seed)]

    forward = model
    if args.compile:
        forward = torch.compile(model, mode='reduce-overhead')
    mark_step = None
    if args.compile and hasattr(torch, 'compiler'):
        mark_step = getattr(torch.compiler, 'cudagraph_mark_step_begin',
                            None)
    loss_fn = torch.nn.functional.cross_entropy

    def step(i):
        x, y = data[i % len(data)]
        if mark_step is not None:
            mark_step()
        opt.zero_grad(set_to_none=True)
        if args.variant == 'autocast':
            with torch.autocast(device, dtype=torch.bfloat16):
                out = forward(x)
                loss = loss_fn(out.reshape(-1, out.shape[-1]).float(),
                               y.reshape(-1))
        else:
            out = forward(x)
            loss = loss_fn(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.detach()

    def sync():
        if device == 'cuda':
            torch.cuda.synchronize()

    for i in range(args.warmup):
        if not args.compile:
            step(i)
            continue
        try:
            step(i)
        except Exception as e:
            traceback.print_exc()
            reason = str(e).strip().splitlines()
            skip('torch.compile failed on this machine: %s: %s' %
                 (type(e).__name__, reason[0] if reason else ''))
    sync()
    start = time.perf_counter()
    loss = None
    for i in range(args.warmup, args.warmup + args.steps):
        loss = step(i)
    sync()
    elapsed = time.perf_counter() - start
    value = float(loss.float().cpu().item())
    print('result: framework=torch model=%s variant=%s compile=%d '
          'device=%s size=%s steps=%d ms_per_step=%.3f loss=%.6g' %
          (args.model, args.variant, int(args.compile), device, args.size,
           args.steps, 1000.0 * elapsed / args.steps, value), flush=True)


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except Exception as e:
        skip('torch not importable: %s: %s' % (type(e).__name__, e))
    run(torch, args)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
