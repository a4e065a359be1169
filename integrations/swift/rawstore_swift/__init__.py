# SPDX-License-Identifier: MIT
"""rawstore_swift: OpenStack Swift's object backend on rawstore devices,
through the per-host broker rawstored (docs/swift.md)."""

__version__ = '0.1'
