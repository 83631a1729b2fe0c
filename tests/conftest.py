import numpy as np
import pytest

import tgrad


@pytest.fixture(autouse=True)
def _seed():
    tgrad.manual_seed(0)
    np.random.seed(0)
    yield
