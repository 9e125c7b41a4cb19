"""pykraft.sim"""
