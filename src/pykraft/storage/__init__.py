"""pykraft.storage"""
