"""Hypothesis stateful test of a broker's storage with crashes anywhere: the machine and its
invariants are :class:`logwright.verify.stateful_storage.StorageMachine` (shared with bench/)."""

from __future__ import annotations

from hypothesis import settings

from logwright.verify.stateful_storage import StorageMachine

# Examples come from the active Hypothesis profile (conftest.py); steps per example are bounded so
# the derandomized CI run stays around a minute.
StorageMachine.TestCase.settings = settings(
    settings(), max_examples=max(300, settings().max_examples), stateful_step_count=30)
TestStorage = StorageMachine.TestCase
