package export

// Internals the external tests (package export_test) use.

// RedisOutcome is redisOutcome: one item's pipeline commands classified by their replies.
var RedisOutcome = redisOutcome
