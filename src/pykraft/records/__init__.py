"""pykraft.records"""
