module github.com/intake-int/intake

go 1.26.8

require gopkg.in/yaml.v3 v3.0.1

require golang.org/x/sys v0.49.0

require github.com/golang/snappy v1.0.0
