"""`vkir.Sampler`: how a texture is read (filter, addressing, border colour, coordinates).

A Sampler is plain data, validated when made and frozen, so the interpreter (which defines what a
sample returns) and every backend (the Vulkan runtime makes one VkSampler per distinct Sampler
and device) read the same description. Textures get one per call (`samplers={name: Sampler}`);
the default is nearest filtering with clamp-to-edge addressing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ArgumentError

__all__ = ["Sampler", "FILTERS", "ADDRESS_MODES", "DEFAULT_SAMPLER"]

FILTERS = ("nearest", "linear")
ADDRESS_MODES = ("clamp", "repeat", "mirror", "border")


@dataclass(frozen=True)
class Sampler:
    """How a texture is sampled: `filter` "nearest" or "linear"; `address` "clamp" (to the edge),
    "repeat", "mirror" (mirrored repeat) or "border" (outside the image reads `border`);
    `border` an (r, g, b, a) colour, one of (0, 0, 0, 0), (0, 0, 0, 1) or (1, 1, 1, 1) (the
    border colours every Vulkan device has); `normalized` whether coordinates run over [0, 1]
    (else over texels: then only "clamp" or "border" addressing)."""

    filter: str = "nearest"
    address: str = "clamp"
    border: tuple = (0.0, 0.0, 0.0, 0.0)
    normalized: bool = True

    def __post_init__(self):
        if self.filter not in FILTERS:
            raise ArgumentError(f"Sampler filter must be one of {FILTERS}, got {self.filter!r}")
        if self.address not in ADDRESS_MODES:
            raise ArgumentError(f"Sampler address must be one of {ADDRESS_MODES}, "
                                f"got {self.address!r}")
        try:
            border = tuple(float(c) for c in self.border)
        except (TypeError, ValueError):
            raise ArgumentError(f"Sampler border must be 4 numbers (r, g, b, a), "
                                f"got {self.border!r}") from None
        if border not in BORDER_COLORS:
            raise ArgumentError(f"Sampler border {self.border!r} is not one of the colours every "
                                "device has: (0, 0, 0, 0), (0, 0, 0, 1) or (1, 1, 1, 1)")
        object.__setattr__(self, "border", border)
        if not isinstance(self.normalized, bool):
            raise ArgumentError(f"Sampler normalized must be True or False, got {self.normalized!r}")
        if not self.normalized and self.address not in ("clamp", "border"):
            raise ArgumentError(f"a Sampler with unnormalized coordinates addresses by "
                                f"'clamp' or 'border' only (Vulkan's rule), got {self.address!r}")


# border colour -> its name in VkBorderColor (the FLOAT_ or INT_ variant follows the format)
BORDER_COLORS = {(0.0, 0.0, 0.0, 0.0): "TRANSPARENT_BLACK", (0.0, 0.0, 0.0, 1.0): "OPAQUE_BLACK",
                 (1.0, 1.0, 1.0, 1.0): "OPAQUE_WHITE"}
DEFAULT_SAMPLER = Sampler()
