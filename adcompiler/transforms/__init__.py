"""transforms"""
