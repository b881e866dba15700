"""The lesson pages' maths (/basics, /positions, /variance): small worked examples, in numpy and torch."""

from lessons.maths import *  # noqa: F403
