module github.com/intake-int/intake

go 1.26.8

require gopkg.in/yaml.v3 v3.0.1

require golang.org/x/sys v0.49.0

require github.com/golang/snappy v1.0.0

require github.com/redis/go-redis/v9 v9.23.0

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)
