module gop
go 1.21
