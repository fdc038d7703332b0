# expect: ok
def lcs(a, b):
    dp = [[""] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            dp[i + 1][j + 1] = dp[i][j] + a[i] if a[i] == b[j] else max(dp[i][j + 1], dp[i + 1][j], key=len)
    return dp[-1][-1]

assert len(lcs("ABCBDAB", "BDCABA")) == 4
assert lcs("abc", "def") == ""
