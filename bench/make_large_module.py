#!/usr/bin/env python3
"""Writes a SPIR-V module whose native binary is tens of MB: one kernel that
reads a program-scope constant table of SIZE MiB (default 24), which the
compiler keeps in the binary's constant surface.

The table's words are drawn from 256 values in a seeded pseudo-random order,
so the entry compresses the way real data does (to about a quarter), not to
nothing as zeros would.

    make_large_module.py OUT.spv [SIZE_MIB]
"""
import random
import struct
import sys

MAGIC, VERSION = 0x07230203, 0x00010000
DISTINCT = 256
INNER = 16384  # words per row


def instruction(opcode, *operands):
    return [(len(operands) + 1) << 16 | opcode, *operands]


def string_words(text):
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(struct.unpack("<%dI" % (len(raw) // 4), raw))


def module(words_in_table, seed=1):
    ids = iter(range(1, 1 << 30))
    void, uint, ulong, v3ulong = next(ids), next(ids), next(ids), next(ids)
    p_input, p_global, p_const = next(ids), next(ids), next(ids)
    n_inner, n_outer, inner, array = next(ids), next(ids), next(ids), next(ids)
    p_array, fn_type, n_words = next(ids), next(ids), next(ids)
    gid, table, main, out, label = next(ids), next(ids), next(ids), next(ids), next(ids)
    ids_v, x, index, row, column, pt, value, po = (next(ids) for _ in range(8))
    constants = [next(ids) for _ in range(DISTINCT)]
    rows = words_in_table // INNER
    row_ids = [next(ids) for _ in range(rows)]
    composite = next(ids)
    bound = next(ids)

    rng = random.Random(seed)
    values = [rng.getrandbits(32) for _ in range(DISTINCT)]
    body = []
    body += instruction(17, 4)  # OpCapability Addresses
    body += instruction(17, 6)  # Kernel
    body += instruction(17, 11)  # Int64
    body += instruction(14, 2, 2)  # OpMemoryModel Physical64 OpenCL
    body += instruction(15, 6, main, *string_words("large_lookup"), gid)  # OpEntryPoint Kernel
    body += instruction(71, gid, 11, 28)  # OpDecorate BuiltIn GlobalInvocationId
    body += instruction(71, gid, 22)  # Constant
    body += instruction(19, void)
    body += instruction(21, uint, 32, 0)
    body += instruction(21, ulong, 64, 0)
    body += instruction(23, v3ulong, ulong, 3)
    body += instruction(32, p_input, 1, v3ulong)  # Input
    body += instruction(32, p_global, 5, uint)  # CrossWorkgroup
    body += instruction(32, p_const, 0, uint)  # UniformConstant
    total = rows * INNER
    body += instruction(43, ulong, n_words, total & 0xFFFFFFFF, total >> 32)
    body += instruction(43, ulong, n_inner, INNER, 0)
    body += instruction(43, ulong, n_outer, rows, 0)
    body += instruction(28, inner, uint, n_inner)  # OpTypeArray
    body += instruction(28, array, inner, n_outer)
    body += instruction(32, p_array, 0, array)
    body += instruction(33, fn_type, void, p_global)
    for cid, value_ in zip(constants, values):
        body += instruction(43, uint, cid, value_)
    for row_id in row_ids:  # an instruction holds at most 65535 words: rows of INNER
        order = [constants[rng.randrange(DISTINCT)] for _ in range(INNER)]
        body += instruction(44, inner, row_id, *order)  # OpConstantComposite
    body += instruction(44, array, composite, *row_ids)
    body += instruction(59, p_input, gid, 1)  # OpVariable Input
    body += instruction(59, p_array, table, 0, composite)  # UniformConstant, initialised
    body += instruction(54, void, main, 0, fn_type)  # OpFunction
    body += instruction(55, p_global, out)  # OpFunctionParameter
    body += instruction(248, label)  # OpLabel
    body += instruction(61, v3ulong, ids_v, gid)  # OpLoad
    body += instruction(81, ulong, x, ids_v, 0)  # OpCompositeExtract
    body += instruction(137, ulong, index, x, n_words)  # OpUMod
    body += instruction(134, ulong, row, index, n_inner)  # OpUDiv
    body += instruction(137, ulong, column, index, n_inner)
    body += instruction(66, p_const, pt, table, row, column)  # OpInBoundsAccessChain
    body += instruction(61, uint, value, pt)
    body += instruction(70, p_global, po, out, x)  # OpInBoundsPtrAccessChain
    body += instruction(62, po, value)  # OpStore
    body += instruction(253)  # OpReturn
    body += instruction(56)  # OpFunctionEnd
    return [MAGIC, VERSION, 0, bound, 0] + body


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    size_mib = int(sys.argv[2]) if len(sys.argv) == 3 else 24
    words = module(size_mib * 1024 * 1024 // 4)
    with open(sys.argv[1], "wb") as out:
        out.write(struct.pack("<%dI" % len(words), *words))


if __name__ == "__main__":
    main()
