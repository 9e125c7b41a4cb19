"""pykraft.net: the asyncio edge speaking the Kafka wire protocol."""
