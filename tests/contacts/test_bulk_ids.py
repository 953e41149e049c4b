"""contacts.bulk_ids: ids made in blocks are the same UUID version 7 strings as core.ids."""

from __future__ import annotations

import uuid
from itertools import islice

from mailroom.contacts import bulk_ids
from mailroom.core.ids import new_id


def test_ids_are_uuid7_strings_and_unique():
    ids = list(islice(bulk_ids.new_ids(), 3 * bulk_ids.BLOCK + 7))
    assert len(set(ids)) == len(ids)
    for value in ids:
        parsed = uuid.UUID(value)
        assert str(parsed) == value  # lower-case, hyphenated, 36 characters
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122


def test_later_blocks_sort_after_earlier_ones_and_after_new_id():
    before = new_id()
    ids = list(islice(bulk_ids.new_ids(), 2 * bulk_ids.BLOCK))
    first_block, second_block = ids[: bulk_ids.BLOCK], ids[bulk_ids.BLOCK :]
    # The 48-bit millisecond prefix never goes backwards.
    assert before[:13] <= min(first_block)[:13]
    assert max(first_block)[:13] <= min(second_block)[:13]
