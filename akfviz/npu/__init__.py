"""akfviz.npu"""
