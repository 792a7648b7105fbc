"""Sizes as experiment files give them (core/units.py)."""

from __future__ import annotations

import pytest

from volbench.core import units


def test_a_float_size_is_a_number_of_bytes_bounded_like_an_integer() -> None:
    # YAML gives 2.2e+278 as a float: refused as too large, as the schema's maximum says
    assert units.parse_size(4096.0) == 4096
    with pytest.raises(ValueError, match="larger than any disk"):
        units.parse_size(2.2562343446461553e+278)
    with pytest.raises(ValueError, match="negative"):
        units.parse_size(-1.5)
