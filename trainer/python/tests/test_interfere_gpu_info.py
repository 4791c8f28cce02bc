"""What the executor says of its GPU: on a CUDA device, the card in nvidia-smi's form, so that a
study continues only on the card it began on (docs/interference.md). Runs on CPU: the device's
properties are stood in for."""

import types

import torch

from schooner_interfere import executor
from schooner_interfere.executor import Executor


class _BareUUID:
    """torch's _CUuuid prints the bare 8-4-4-4-12 hex."""

    def __str__(self):
        return "927936d9-0af1-d39b-f3ed-972d36035924"


def _cuda_executor(monkeypatch, uuid):
    props = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", multi_processor_count=132,
                                  total_memory=80 << 30, uuid=uuid)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(executor, "_smi", lambda fields: "580.159.04")
    x = Executor.__new__(Executor)
    x.scale, x.device, x.cuda = "h200", torch.device("cuda"), True
    return x


def test_a_cuda_executor_names_its_card_as_nvidia_smi_does(monkeypatch):
    info = _cuda_executor(monkeypatch, _BareUUID()).gpu()
    assert info["uuid"] == "GPU-927936d9-0af1-d39b-f3ed-972d36035924"
    assert info["model"] == "NVIDIA H100 80GB HBM3" and info["driver"] == "580.159.04"


def test_a_card_already_in_nvidia_smi_form_is_kept(monkeypatch):
    info = _cuda_executor(monkeypatch, "GPU-927936d9-0af1-d39b-f3ed-972d36035924").gpu()
    assert info["uuid"] == "GPU-927936d9-0af1-d39b-f3ed-972d36035924"


def test_a_torch_without_the_card_names_none(monkeypatch):
    assert "uuid" not in _cuda_executor(monkeypatch, None).gpu()


def test_the_cpu_test_mode_names_no_card():
    x = Executor.__new__(Executor)
    x.scale, x.device, x.cuda = "tiny", torch.device("cpu"), False
    assert "uuid" not in x.gpu()
