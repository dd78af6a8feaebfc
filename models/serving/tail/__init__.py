"""The tails of a replica's latencies as laws of their own: the p99 TPOT as the life of a
reply (`models.serving.tail.reply_life`), which `models.serving.batch_model` prices at
each mean batch."""
