import background
import numpy as np
import pytest

import tgrad


@pytest.fixture(autouse=True)
def _seed():
    tgrad.manual_seed(0)
    np.random.seed(0)
    yield


def pytest_collection_finish(session):
    """Start the slow subprocess checks of the collected modules (tests/background.py)."""
    if session.config.option.collectonly:
        return
    modules = {getattr(item, "module", None) for item in session.items}
    for module in sorted(modules - {None}, key=lambda m: m.__name__):
        if hasattr(module, "start_background"):
            module.start_background()


def pytest_sessionfinish(session):
    background.stop_all()
