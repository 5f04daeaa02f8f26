"""tape"""
