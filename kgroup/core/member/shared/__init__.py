"""What both members share: the commit book, events, offsets and the request book (see docs/member.md)."""
