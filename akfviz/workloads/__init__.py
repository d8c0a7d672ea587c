"""akfviz.workloads"""
