"""Shared test set-up."""
import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """The tests' matmuls are tiny: one thread is faster than two fighting over a 2-core CPU,
    and it keeps results independent of the machine's core count."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
