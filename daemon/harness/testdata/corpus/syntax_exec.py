print("before")
exec("1 +")
