#!/usr/bin/env python3
"""weak_glibc_versions.py IN OUT BASE: copy the ELF shared library IN to OUT
with every glibc version it requires that is newer than BASE (e.g. 2.34)
marked weak (VER_FLG_WEAK in its .gnu.version_r entry), so that the dynamic
loader of an older glibc loads it instead of refusing it ("version
`GLIBC_2.36' not found").  The symbols themselves must then come from
another object (contrib/gpu/glibc_compat.c).  Prints the versions it
weakened; exit status 0 done, 1 failed, 2 bad usage.  Used by
contrib/gpu/bundle.sh; 64-bit little-endian ELF only."""
import struct
import sys

SHT_GNU_VERNEED = 0x6FFFFFFE
VER_FLG_WEAK = 0x2


def version_key(name):
    return tuple(int(x) for x in name[len("GLIBC_"):].split("."))


def weaken(data, base):
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    done = []
    for sh in sections:
        if sh[1] != SHT_GNU_VERNEED:
            continue
        strtab = sections[sh[6]][4]  # sh_link: the string table's file offset
        count = sh[7]  # sh_info: number of Verneed entries
        off = sh[4]
        for _ in range(count):
            _, cnt, _, vn_aux, vn_next = struct.unpack_from("<HHIII", data, off)
            aux = off + vn_aux
            for _ in range(cnt):
                _, flags, _, name_off, vna_next = struct.unpack_from("<IHHII", data, aux)
                end = data.index(b"\0", strtab + name_off)
                name = data[strtab + name_off:end].decode()
                if name.startswith("GLIBC_2.") and version_key(name) > base:
                    struct.pack_into("<H", data, aux + 4, flags | VER_FLG_WEAK)
                    done.append(name)
                aux += vna_next
            off += vn_next
    return done


def main():
    if len(sys.argv) != 4:
        print("usage: weak_glibc_versions.py IN OUT BASE", file=sys.stderr)
        return 2
    try:
        base = tuple(int(x) for x in sys.argv[3].split("."))
        with open(sys.argv[1], "rb") as f:
            data = bytearray(f.read())
        done = weaken(data, base)
        with open(sys.argv[2], "wb") as f:
            f.write(data)
    except (OSError, ValueError, struct.error) as e:
        print(f"weak_glibc_versions.py: {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    print(" ".join(sorted(set(done))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
