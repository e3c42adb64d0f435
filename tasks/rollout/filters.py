def judge_trajectory(*a, **k):
    return []
