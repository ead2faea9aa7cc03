module a.pikod.internal/busenv

go 1.26
