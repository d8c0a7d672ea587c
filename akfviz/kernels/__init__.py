"""akfviz.kernels"""
