"""Settings for the whole suite."""

import torch

# The models here are tiny: one intra-op thread is fastest, and it avoids OpenMP threads
# spinning against each other on a busy 2-core machine (100x slowdowns were measured).
torch.set_num_threads(1)
