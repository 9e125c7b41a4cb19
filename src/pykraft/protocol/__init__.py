"""pykraft.protocol"""
