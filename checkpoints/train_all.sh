#!/usr/bin/env bash
# Reproduce every shipped checkpoint (CPU, about 50 minutes on 2 cores; OMP_NUM_THREADS=1 is faster on a busy box).
# Each checkpoint's checkpoint.json records its own command under "command".
set -euo pipefail
cd "$(dirname "$0")/.."
# every scheme of the registry (transformer_core/positional.py POSITION_SCHEMES)
schemes=$(python -c 'from transformer_core.positional import POSITION_SCHEMES; print(*POSITION_SCHEMES)')
for scheme in $schemes; do
  python -m transformer_core train --task reverse --positions "$scheme" --steps 3000 \
    --device cpu --quiet --out "checkpoints/reverse-$scheme"
done
# Vaswani's Post-LN block (norm after each residual sum), otherwise reverse-sinusoidal's recipe
python -m transformer_core train --task reverse --positions sinusoidal --norm-position post --steps 3000 \
  --device cpu --quiet --out checkpoints/reverse-postln
# the recurrent baselines, same data and budget: a GRU encoder-decoder without and with Bahdanau attention
for arch in gru bahdanau; do
  python -m transformer_core train --task reverse --arch "$arch" --steps 3000 \
    --device cpu --quiet --out "checkpoints/reverse-$arch"
done
python -m transformer_core train --task induction --positions learned --steps 2000 --eval-every 200 \
  --device cpu --quiet --out checkpoints/gpt-induction
for scheme in $schemes; do
  python -m transformer_core train --task lm --positions "$scheme" --steps 1500 \
    --device cpu --quiet --out "checkpoints/gpt-$scheme"
done
# BERT's objective on the GPTs' corpus and size: hidden characters, read both ways (RoPE: a bidirectional
# stack has no other sense of order, and learned positions start too faint to find one in this budget)
python -m transformer_core train --task mlm --positions rope --steps 3000 \
  --device cpu --quiet --out checkpoints/bert-char
# every GPT's heads over 64 held-out windows, kept beside it as profiles.json (/heads section 11)
for name in gpt-induction $(for scheme in $schemes; do echo "gpt-$scheme"; done); do
  python -m transformer_core profile "$name" --write
done
