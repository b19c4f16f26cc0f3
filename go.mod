module github.com/intake-int/intake

go 1.26.8
