"""The shipped catalogue loads, every number has a source, and bad files fail with file, key and line."""
from __future__ import annotations

import re
import textwrap

import pytest

from pearl_py.errors import UserError
from pearl_py.platform import Catalogue, CatalogueError, Platform
from pearl_py.resources import devices_dir


def test_shipped_platforms_expand():
    assert [d.name for d in Platform.load("pearl-cpu-gpu-fpga")] == ["cpu", "gpu", "fpga"]
    dgx = Platform.load("dgx-a100-node")
    assert len(dgx.by_kind("gpu")) == 8 and len(dgx.by_kind("cpu")) == 2
    cluster = Platform.load("cluster-64x8gpu")
    assert len(cluster.by_kind("gpu")) == 512 and {d.spec.cores for d in cluster.by_kind("cpu")} == {64}


def test_catalogue_covers_the_required_hardware():
    cat = Catalogue.load()
    for name in ("xeon-cascadelake-vm", "xeon-gold-6326", "epyc-9654", "a100-sxm4-80gb", "h100-sxm5-80gb",
                 "rtx-4090", "alveo-u250", "alveo-u280", "agilex-agf014"):
        assert name in cat.devices
    for name in ("pcie-gen3-x16", "pcie-gen4-x16", "pcie-gen5-x16", "shm", "nvlink3", "tcp-40gbe", "bypass-40gbe"):
        assert name in cat.links
    vu9p, vu13p = cat.parts["xcvu9p"], cat.parts["xcvu13p"]   # DS890's feature summary, DS923's DSP F_MAX at -2
    assert (vu9p.dsp, vu9p.lut, vu9p.ff, vu9p.memories["bram36"].count, vu9p.memories["uram"].count,
            vu9p.fmax_mhz) == (6840, 1182240, 2364480, 2160, 960, 775)
    assert (vu13p.dsp, vu13p.lut, vu13p.ff, vu13p.memories["bram36"].count, vu13p.memories["uram"].count,
            vu13p.fmax_mhz) == (12288, 1728000, 3456000, 2688, 1280, 775)
    assert "xcvu9p" not in cat.devices   # a bare part: no off-chip memory, host link or power for a platform


def test_every_number_in_the_catalogue_has_a_source_comment():
    for path in list(devices_dir().glob("*.yaml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"\s+\w+: -?[\d.]+\s*(#|$)", line):
                assert "#" in line, f"{path.name}:{n} has a number without a source: {line.strip()}"


def test_routes_go_through_the_host_and_the_network():
    p = Platform.load("pearl-cpu-gpu-fpga")
    assert [link.name for link in p.route("gpu", "fpga")] == ["pcie-gen4-x16", "pcie-gen4-x16"]
    assert p.transfer_s("cpu", "cpu", 1e9) == 0
    c = Platform.load("cluster-64x8gpu")
    assert [link.name for link in c.route("node0.gpu1", "node9.gpu2")] == ["pcie-gen4-x16", "tcp-40gbe", "pcie-gen4-x16"]
    assert [link.name for link in c.route("node3.gpu1", "node3.gpu2")] == ["nvlink3"]


def _platform_file(tmp_path, text):
    path = tmp_path / "mine.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def _error(tmp_path, text) -> CatalogueError:
    with pytest.raises(CatalogueError) as info:
        Platform.load(_platform_file(tmp_path, text))
    assert isinstance(info.value, UserError)
    return info.value


GOOD_LINK = """
links:
  my-link:
    bandwidth_gbs: 10
    latency_us: 2
platforms:
  mine:
    devices:
      cpu: {type: xeon-gold-6326}
      gpu: {type: a100-sxm4-80gb}
    links:
      - {between: [cpu, gpu], type: my-link}
"""


def test_user_platform_file_with_its_own_link(tmp_path):
    p = Platform.load(_platform_file(tmp_path, GOOD_LINK))
    assert p.name == "mine" and p.route("cpu", "gpu")[0].bandwidth_gbs == 10


def test_negative_bandwidth_names_file_key_and_line(tmp_path):
    err = _error(tmp_path, GOOD_LINK.replace("bandwidth_gbs: 10", "bandwidth_gbs: -10"))
    assert err.file.endswith("mine.yaml") and err.key == "links.my-link.bandwidth_gbs" and err.line == 3
    assert "must be > 0" in str(err) and "mine.yaml:3" in str(err)


def test_key_typo_suggests_the_right_key(tmp_path):
    err = _error(tmp_path, GOOD_LINK.replace("bandwidth_gbs", "bandwith_gbs"))
    assert err.key == "links.my-link.bandwith_gbs" and "did you mean 'bandwidth_gbs'" in str(err)


def test_missing_field_is_named(tmp_path):
    err = _error(tmp_path, GOOD_LINK.replace("    latency_us: 2\n", ""))
    assert err.key == "links.my-link" and "missing required key 'latency_us'" in str(err)


def test_link_to_unknown_device_is_named(tmp_path):
    err = _error(tmp_path, GOOD_LINK.replace("[cpu, gpu]", "[cpu, gpu1]"))
    assert err.key == "platforms.mine.links.0.between" and "unknown device 'gpu1'" in str(err) and err.line == 11


def test_unknown_device_type_and_link_type(tmp_path):
    assert "unknown device type 'a100'" in str(_error(tmp_path, GOOD_LINK.replace("a100-sxm4-80gb", "a100")))
    assert "unknown link type 'pcie9'" in str(_error(tmp_path, GOOD_LINK.replace("type: my-link", "type: pcie9")))


def test_duplicate_name_and_unknown_section(tmp_path):
    assert "already defined" in str(_error(tmp_path, GOOD_LINK.replace("my-link:", "shm:").replace(
        "type: my-link", "type: shm")))
    assert "unknown key 'cpu'" in str(_error(tmp_path, "cpu:\n  x: 1\n"))


def test_bad_fpga_memory_entry(tmp_path):
    text = """
    fpgas:
      tiny:
        vendor: x
        model_name: x
        clock_mhz: 100
        dsp: 10
        lut: 1000
        memories: {bram: {count: 10, bits: 36864}}
        dsp_per_mac: 1
        dsp_per_add: 1
        fmul_latency: 3
        fadd_latency: 3
        mem_read_latency: 2
        offchip_bandwidth_gbs: 10
        offchip_latency_ns: 100
        idle_w: 5
        peak_w: 20
        host_link: pcie-gen3-x16
    platforms:
      p:
        devices: {f: {type: tiny}, c: {type: xeon-gold-6326}}
    """
    err = _error(tmp_path, text)
    assert err.key == "fpgas.tiny.memories.bram" and "missing required key 'ports'" in str(err)


def test_unknown_platform_name():
    with pytest.raises(CatalogueError, match="unknown platform 'nope'.*dgx-a100-node"):
        Platform.load("nope")


FPGA_PLATFORM = """
platforms:
  mine:
    devices:
      cpu: {type: xeon-gold-6326}
      fpga: {type: alveo-u250, training_precision: "ap_fixed<16,6>"}
    links:
      - {between: [cpu, fpga], type: pcie-gen3-x16}
"""


def test_fpga_training_precision_from_the_platform_entry(tmp_path):
    fpga = Platform.load(_platform_file(tmp_path, FPGA_PLATFORM)).device("fpga")
    assert fpga.spec.training_precision.text == "ap_fixed<16,6>" and fpga.spec.dsp == 12288
    assert Platform.load("fpga-replay-cluster-4").device("node0.fpga").spec.training_precision.text == "float32"
    devices = Platform.load(_platform_file(tmp_path, FPGA_PLATFORM)).to_dict()["devices"]
    assert [d.get("training_precision") for d in devices] == [None, "ap_fixed<16,6>"]


@pytest.mark.parametrize("edit, key, message", [
    (('"ap_fixed<16,6>"', "int8"), "platforms.mine.devices.fpga.training_precision",
     "must be float32, float16 or ap_fixed<W,I> (1 <= W <= 64), got 'int8'"),
    (("cpu: {type: xeon-gold-6326}", "cpu: {type: xeon-gold-6326, training_precision: float16}"),
     "platforms.mine.devices.cpu.training_precision", "only an FPGA has one; 'xeon-gold-6326' is a cpu"),
    (("type: alveo-u250", "type: xcvu13p"), "platforms.mine.devices.fpga.type",
     "'xcvu13p' is a bare FPGA part (fpga_parts: for pearl fpga-design); a platform needs a board from fpgas:"),
])
def test_bad_fpga_device_entry_is_located(tmp_path, edit, key, message):
    err = _error(tmp_path, FPGA_PLATFORM.replace(*edit))
    assert err.key == key and message in str(err) and err.line == (4 if "cpu" in key else 5)
