import collections
collections.OrderedDic()
