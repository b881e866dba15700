"""The four special tokens every vocabulary starts with, and their ids.

Why a module of its own: the models (padding masks) and generation (stop at EOS) need the
ids, and the tokenizers that build vocabularies live in `io`; both read them from here.
"""

SPECIAL_TOKENS = ("<pad>", "<sos>", "<eos>", "<unk>")
PAD_ID, SOS_ID, EOS_ID, UNK_ID = range(4)
