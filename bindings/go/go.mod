module pagoda.dev/pagoda

go 1.19
