module weir.dev/guest

go 1.24
